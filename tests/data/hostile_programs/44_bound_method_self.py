# expect: limit
mug = InteractionObject("Mug")
m = [mug.pickup]
x = m[0].pickup
