# expect: refused
s = f"{1:>1000000000}"
