# expect: refused
mug = InteractionObject("Mug")
mug.teleport()
