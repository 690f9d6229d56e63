# expect: limit
x = "a" * 10**10
