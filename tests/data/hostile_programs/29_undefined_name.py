# expect: refused
mug = InteractionObjekt("Mug")
