# expect: refused
if True:
mug = InteractionObject("Mug")
