# expect: limit
x = sum([[0] * 1000] * 1000, [])
