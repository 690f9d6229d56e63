# expect: refused
g = globals()
