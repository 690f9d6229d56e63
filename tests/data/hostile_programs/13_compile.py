# expect: refused
c = compile("1", "x", "eval")
