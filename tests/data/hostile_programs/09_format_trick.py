# expect: refused
s = "{0.__class__}".format(1)
