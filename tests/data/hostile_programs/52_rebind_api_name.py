# expect: refused
InteractionObject = print
InteractionObject("x")
