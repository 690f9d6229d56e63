# expect: refused
mug = InteractionObject("Mug")
mug._runtime.world
