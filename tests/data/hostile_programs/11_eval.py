# expect: refused
eval("1+1")
