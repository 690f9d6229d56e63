# expect: refused
mug = InteractionObject(**{"object_class": "Mug"})
