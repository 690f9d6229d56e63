# expect: refused
if (n := 10):
    pass
