# expect: limit
x = list(range(10**12))
