# expect: refused
mug = InteractionObject("Mug")
mug.object_class = "Knife"
