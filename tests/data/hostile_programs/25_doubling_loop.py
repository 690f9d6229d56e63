# expect: limit
s = "ab"
for i in range(100):
    s = s + s
