# expect: refused
mug = InteractionObject("Mug")
[mug.pickup][0]()
