# expect: refused
mug = InteractionObject("Mug"
mug.pickup()
