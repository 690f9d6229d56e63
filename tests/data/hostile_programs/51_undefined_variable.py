# expect: error
mug = InteractionObject("Mug")
knife.pickup()
