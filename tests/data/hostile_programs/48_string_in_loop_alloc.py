# expect: limit
parts = []
for i in range(10000):
    parts.append("x" * 90000)
