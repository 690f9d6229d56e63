# expect: limit
x = 3
for i in range(64):
    x = x * x
