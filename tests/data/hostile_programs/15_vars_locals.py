# expect: refused
v = vars()
l = locals()
