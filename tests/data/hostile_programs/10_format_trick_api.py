# expect: refused
mug = InteractionObject("Mug")
s = "{0.go_to.__globals__}".format(mug)
