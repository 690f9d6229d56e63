# expect: limit
s = "%*d" % (10**8, 1)
