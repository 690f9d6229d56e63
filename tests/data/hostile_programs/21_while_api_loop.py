# expect: limit
mug = InteractionObject("Mug")
while True:
    mug.check_attribute("dirty", True)
