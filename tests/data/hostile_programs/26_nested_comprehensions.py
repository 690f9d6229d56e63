# expect: limit
x = [[[[0 for a in range(100)] for b in range(100)] for c in range(100)] for d in range(100)]
