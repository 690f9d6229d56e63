# expect: error
mug = InteractionObject()
