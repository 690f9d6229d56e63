# expect: limit
x = [0] * 10**10
