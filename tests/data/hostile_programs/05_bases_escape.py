# expect: refused
base = ().__class__.__bases__[0]
