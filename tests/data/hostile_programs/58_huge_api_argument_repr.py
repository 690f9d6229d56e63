# expect: limit
# needs: worker (the API's error message repr()s its argument: a 10 GB string)
mug = InteractionObject('Mug')
row = ('x' * 100000,) * 100000
mug.check_attribute(row, True)
