# expect: refused
f = lambda: 1
f()
