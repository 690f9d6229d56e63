"""Phrase banks for task instructions: object names, goal paraphrases, piecemeal steps, chit-chat.

Placeholders: ``{x}`` / ``{xs}`` object (singular / plural), ``{y}`` receptacle, ``{m}`` movable
receptacle, ``{prep}`` in/on, ``{n}`` number word, ``{lamp}``, ``{serve}``, ``{items}`` (a list
of dishes), ``{the_x}`` an object with an optional description ("the red mug").
"""

from __future__ import annotations

# object type -> ways people call it (first is the plain one)
NAMES: dict[str, tuple[str, ...]] = {
    "CounterTop": ("counter", "countertop", "kitchen counter"),
    "CounterTopBath": ("counter", "bathroom counter", "vanity"),
    "DiningTable": ("dining table", "table", "kitchen table"),
    "Fridge": ("fridge", "refrigerator"),
    "SinkBasin": ("sink",),
    "HousePlant": ("plant", "house plant", "potted plant"),
    "RemoteControl": ("remote", "remote control", "TV remote"),
    "Sofa": ("sofa", "couch"),
    "CoffeeMachine": ("coffee machine", "coffee maker"),
    "StoveBurner": ("stove", "burner"),
    "GarbageCan": ("bin", "trash can"),
    "TVStand": ("TV stand", "TV cabinet"),
    "CoffeeTable": ("coffee table", "low table"),
    "SideTable": ("side table", "nightstand"),
    "ArmChair": ("armchair", "chair"),
    "CellPhone": ("phone", "cell phone"),
    "KeyChain": ("keys", "key chain"),
    "CreditCard": ("credit card", "card"),
    "FloorLamp": ("floor lamp", "lamp", "standing lamp"),
    "DeskLamp": ("desk lamp", "lamp"),
    "Dishware": ("dish", "plate or bowl"),
    "Drinkware": ("cup or mug", "drinking vessel"),
    "Cookware": ("pot or pan", "piece of cookware"),
    "Mug": ("mug", "coffee mug"),
    "Pot": ("pot", "cooking pot"),
    "Pan": ("pan", "frying pan"),
    "Knife": ("knife",),
    "ButterKnife": ("butter knife",),
    "Towel": ("towel", "bath towel"),
    "BasketBall": ("basketball", "ball"),
    "TeddyBear": ("teddy bear", "stuffed bear"),
    "AlarmClock": ("alarm clock", "clock"),
    "SoapBar": ("bar of soap", "soap"),
    "ToiletPaper": ("toilet paper roll", "roll of toilet paper"),
    "PaperTowelRoll": ("paper towel roll", "roll of paper towels"),
}
PLURALS = {"Knife": "knives", "ButterKnife": "butter knives", "Potato": "potatoes", "Tomato": "tomatoes",
           "Box": "boxes", "Dishware": "dishes", "Drinkware": "cups and mugs", "Cookware": "pots and pans",
           "Lettuce": "heads of lettuce", "Bread": "loaves of bread", "Statue": "statues",
           "KeyChain": "sets of keys", "Watch": "watches", "Glass": "glasses", "Cloth": "cloths",
           "SaltShaker": "salt shakers", "SoapBar": "bars of soap", "ToiletPaper": "toilet paper rolls",
           "PaperTowelRoll": "paper towel rolls", "TeddyBear": "teddy bears", "PepperShaker": "pepper shakers", "Bathtub": "bathtubs"}
NUMBERS = {"0": "no", "1": "one", "2": "two", "3": "three", "4": "four"}
COLOURS = {"red": (200, 40, 40), "green": (60, 160, 70), "blue": (50, 90, 180), "yellow": (235, 210, 60),
           "white": (245, 245, 240), "black": (30, 30, 30), "grey": (140, 140, 145),
           "brown": (140, 95, 50), "orange": (230, 120, 40), "purple": (120, 60, 150), "pink": (230, 150, 180)}

DRIVER_OPENERS = ("hi, what should I do today?", "Hello! What's my task?", "hey", "hi there, how can I help?",
                  "what can I do for you?", "Hi. Ready when you are.", "good morning! what's first?",
                  "hello", "Hi, what are we doing?")
COMMANDER_GREETINGS = ("hi", "Hello!", "hey there", "hi, thanks for helping", "good morning")
COMMANDER_OPENERS = ("hi, today we", "Hello. Today you", "ok so", "Hi! I need you to", "we need to")
DRIVER_ACKS = ("ok", "okay", "on it", "sure", "got it", "will do", "alright", "ok, doing that now")
DRIVER_DONE = ("done", "ok, done", "finished that", "that's done. what next?", "done, next?", "ok what next")
DRIVER_FINAL = ("all done!", "done. anything else?", "I think that's everything", "finished",
                "is there anything else?")
COMMANDER_CLOSERS = ("that's all, thanks!", "great job, we're done", "perfect, thank you",
                     "thanks, that's everything", "awesome, all done", "good work")
WHERE_QUESTIONS = ("where is the {x}?", "where can I find a {x}?", "do you know where the {x} is?",
                   "I can't find the {x}", "which {x} should I use?")
LOCATION_ANSWERS = ("the {x} is {prep} the {y}", "there's a {x} {prep} the {y}", "check the {y}",
                    "try {prep} the {y}", "you'll find a {x} {prep} the {y}", "{x} is {prep} the {y}")
NO_LOCATION_ANSWERS = ("not sure, look around", "I don't see it on my screen, try the cabinets",
                       "hmm, maybe check the drawers", "it should be somewhere in the room")
FILLERS = ("", "", "", "please ", "can you ", "could you ")

# goal paraphrases (the Commander's and the ALFRED-style sentence both draw from these)
GOALS: dict[str, tuple[str, ...]] = {
    "Coffee": ("make a cup of coffee", "prepare coffee in a clean mug", "I'd like some coffee",
               "make me a mug of coffee", "we need a coffee", "get some coffee into a clean mug",
               "brew a coffee in the {x}", "fill a clean {x} with coffee", "coffee please, in a clean {x}",
               "I could really use a coffee", "use the coffee machine to make a {x} of coffee",
               "pour me some coffee"),
    "Water Plant": ("water the plant", "the {x} needs water", "give the {x} some water",
                    "pour some water on the {x}", "the {x} looks dry, can you water it",
                    "bring water from the sink to the {x}", "the {x} is thirsty", "please water my {x}",
                    "fill something with water and water the {x}"),
    "Boil X": ("boil a {x}", "I need a boiled {x}", "cook a {x} in boiling water", "boil the {x} in a pot",
               "please make a boiled {x}"),
    "Plate Of Toast": ("make a plate of toast", "make a slice of toast and put it on a clean plate",
                       "I want toast on a plate", "toast some bread and serve it on a plate",
                       "serve a piece of toast on a plate", "cut a slice of bread, toast it and plate it",
                       "I'd like a piece of toast on a clean plate", "put some toast on a plate for me",
                       "can we get a toasted slice of bread on a plate", "toast one slice of bread, then serve it"),
    "Clean All X": ("clean all the {xs}", "rinse every {x}", "wash all of the {xs}",
                    "the {xs} are dirty, clean them all", "all {xs} need to be rinsed"),
    "N Slices Of X In Y": ("put {n} slice(s) of {x} {prep} a clean {y}", "serve {n} {x} slice(s) {prep} a {y}",
                           "slice a {x} and put {n} piece(s) {prep} a clean {y}",
                           "I need {n} slice(s) of {x} {prep} a {y}"),
    "N Cooked Slices Of X In Y": ("cook {n} slice(s) of {x} and put them {prep} a clean {y}",
                                  "serve {n} cooked {x} slice(s) {prep} a {y}",
                                  "slice the {x}, cook {n} piece(s) and serve them {prep} a clean {y}",
                                  "I'd like {n} cooked slice(s) of {x} {prep} a {y}"),
    "Put All X On Y": ("put all the {xs} {prep} the {y}", "move every {x} {prep} the {y}",
                       "collect the {xs} and place them {prep} the {y}", "all {xs} go {prep} the {y}",
                       "gather up the {xs} and put them {prep} a {y}"),
    "Put All X In One Y": ("put all the {xs} {prep} one {y}", "gather every {x} {prep} a single {y}",
                           "all {xs} should end up {prep} the same {y}",
                           "collect the {xs} and put them together {prep} one {y}"),
    "Salad": ("make a salad with {items}", "prepare a salad: {items}, all on a clean plate",
              "I'd like a salad, {items}", "make a salad on a plate with {items}"),
    "Sandwich": ("make a sandwich with {items}", "I want a sandwich: two slices of toast with {items}",
                 "prepare a sandwich on a clean plate, {items}", "make me a toasted sandwich with {items}"),
    "Breakfast": ("make breakfast: {items}, and put it all on the {serve}",
                  "prepare breakfast. I want {items}. serve everything on the {serve}",
                  "let's make breakfast - {items} - everything goes on the {serve}",
                  "breakfast time! {items}, all on the {serve}"),
    "pick_and_place": ("put a {x} {prep} the {y}", "place the {x} {prep} the {y}", "move a {x} to the {y}",
                       "take the {x} and set it {prep} the {y}", "bring a {x} over to the {y}"),
    "pick_two_and_place": ("put two {xs} {prep} the {y}", "place both {xs} {prep} the {y}",
                           "move two {xs} to the {y}", "take a pair of {xs} and put them {prep} the {y}"),
    "look_at_obj_in_light": ("examine the {x} under the {lamp}", "look at a {x} in the light of the {lamp}",
                             "pick up the {x} and turn on the {lamp} to look at it",
                             "hold the {x} up to the {lamp}'s light"),
    "pick_clean_then_place": ("rinse a {x} and put it {prep} the {y}", "clean the {x} and place it {prep} the {y}",
                              "wash a {x} in the sink, then set it {prep} the {y}",
                              "put a clean {x} {prep} the {y}"),
    "pick_heat_then_place": ("heat a {x} and put it {prep} the {y}", "warm up the {x} and place it {prep} the {y}",
                             "microwave a {x}, then set it {prep} the {y}", "put a hot {x} {prep} the {y}"),
    "pick_cool_then_place": ("chill a {x} and put it {prep} the {y}", "cool the {x} in the fridge, then place it {prep} the {y}",
                             "put a cold {x} {prep} the {y}", "refrigerate a {x} and move it to the {y}"),
    "pick_and_place_with_movable_recep": ("put a {x} in a {m} and set the {m} {prep} the {y}",
                                          "place the {m} with a {x} in it {prep} the {y}",
                                          "move a {x} to the {y} using a {m}",
                                          "put the {x} into a {m}, then put the {m} {prep} the {y}"),
}

# piecemeal steps the Commander may give one at a time
STEPS: dict[str, tuple[str, ...]] = {
    "Coffee": ("grab a mug", "rinse it in the sink if it's dirty", "put it in the coffee machine",
               "turn the coffee machine on"),
    "Water Plant": ("find a container", "fill it with water at the sink", "pour the water on the {x}"),
    "Boil X": ("find a pot", "fill the pot with water", "put the {x} in the pot", "put the pot on the stove",
               "turn the burner on"),
    "Plate Of Toast": ("slice the bread with a knife", "toast one slice in the toaster",
                       "make sure the plate is clean", "put the toast on the plate"),
    "Clean All X": ("take a {x} to the sink", "rinse it under the faucet", "do the same with the other {xs}"),
    "N Slices Of X In Y": ("grab a knife", "slice the {x}", "rinse the {y} if it's dirty",
                           "put {n} slice(s) {prep} the {y}"),
    "N Cooked Slices Of X In Y": ("grab a knife", "slice the {x}", "cook {n} slice(s) in the microwave or a pan",
                                  "put them {prep} a clean {y}"),
    "Put All X On Y": ("find the {xs}", "put each {x} {prep} the {y}"),
    "Put All X In One Y": ("pick one {y}", "put every {x} {prep} that {y}"),
    "Salad": ("slice the vegetables with a knife", "make sure the plate is clean", "put {items} on the plate"),
    "Sandwich": ("we're making a sandwich, so slice the bread first", "toast two slices",
                 "now slice the fillings: {items}", "put the toast and {items} together on a clean plate"),
    "Breakfast": ("let's make breakfast, start with {first}", "then {second}", "put everything on the {serve}"),
    "pick_and_place": ("pick up a {x}", "put it {prep} the {y}"),
    "pick_two_and_place": ("grab one {x}", "put it {prep} the {y}", "then do the same with another {x}"),
    "look_at_obj_in_light": ("pick up the {x}", "turn on the {lamp}"),
    "pick_clean_then_place": ("pick up the {x}", "rinse it in the sink", "put it {prep} the {y}"),
    "pick_heat_then_place": ("take the {x}", "heat it in the microwave", "put it {prep} the {y}"),
    "pick_cool_then_place": ("take the {x}", "put it in the fridge for a bit", "then put it {prep} the {y}"),
    "pick_and_place_with_movable_recep": ("put the {x} in a {m}", "carry the {m} to the {y}"),
}

# ---------------------------------------------------------------- wider, human-like dialogues
# (instructions.human_dialogue): the goal said indirectly, without the task's keyword
INDIRECT_GOALS: dict[str, tuple[str, ...]] = {
    "Coffee": ("I can barely keep my eyes open, get the coffee maker going with a clean mug", "caffeine time, the machine can do it, just needs a washed cup",
               "a hot cup of joe would save my morning", "fill a rinsed mug at the coffee machine",
               "need a pick-me-up from the machine, clean mug please", "my mug is empty and the brewer is right there",
               "something warm from the coffee maker would be great, in a washed mug"),
    "Water Plant": ("the {x} is wilting", "the leaves are drooping, it needs a drink", "give the potted thing some tap water",
                    "nobody has watered the {x} in ages", "the soil of the {x} is totally dry", "my {x} hasn't had a drink in days",
                    "the greenery could use a splash from the sink"),
    "Boil X": ("I'd like a {x} done in hot water on the stove", "stick the {x} in a pot of water and heat it till it bubbles",
               "cook the {x} in water, not in a pan", "a {x} simmered in a pot please", "get a pot of water going on the burner with a {x} in it",
               "{x} in a pot of water on the burner please", "I'm craving a {x} cooked in bubbling water"),
    "Plate Of Toast": ("brown a piece of bread in the toaster and plate it", "just one toasted bread slice on a plate, nothing on it",
                       "cut the loaf, run a slice through the toaster, serve it on a dish", "crispy bread, one piece, plated", "something crispy from the toaster, on a dish",
                       "a warm crunchy bread slice on a clean dish would be nice"),
    "Clean All X": ("none of the {xs} are clean", "the {xs} are filthy, every single one needs a rinse",
                    "do the dishes: all the {xs}", "get every {x} in the room under the tap", "every {x} in here is grimy, scrub them all",
                    "we ran out of clean {xs}, sort every one of them out at the sink"),
    "N Slices Of X In Y": ("cut {n} piece(s) off the {x}, raw, into a clean {y}", "{n} uncooked bit(s) of {x} {prep} a washed {y}, no cooking",
                           "just cut the {x} and put {n} fresh piece(s) {prep} the {y}", "raw {x}, {n} slice(s), {prep} a clean {y} - don't heat it", "I just want {n} fresh bit(s) of {x} in a {y}",
                           "chop the {x}, {n} piece(s) go {prep} a clean {y}"),
    "N Cooked Slices Of X In Y": ("{n} hot piece(s) of {x} {prep} a clean {y}", "fry up {n} bit(s) of {x} and put them {prep} a clean {y}",
                                  "slice the {x} and microwave {n} piece(s), then {prep} the {y}", "{n} {x} slice(s), cooked not raw, {prep} a {y}", "cut the {x} and heat {n} piece(s), then into a {y}",
                                  "warm {x} slice(s), {n} of them, {prep} a clean {y}"),
    "Put All X On Y": ("every {x} belongs {prep} the {y}", "clear the {xs} off everything else and pile them {prep} the {y}",
                       "I keep finding {xs} everywhere, move them all over to the {y}", "leave all the {xs} {prep} the {y}", "round up the {xs}, they all go {prep} the {y}",
                       "tidy the {xs} onto the {y}, all of them"),
    "Put All X In One Y": ("keep the {xs} together in one {y}", "pick a single {y} and put every {x} {prep} it",
                           "don't split the {xs} up, they all share one {y}", "all {xs} {prep} just one {y}, the same one", "every {x} into the same {y}, don't spread them out",
                           "one {y} for all of the {xs}"),
    "Salad": ("something fresh on a plate: {items}", "cut up some veggies for me, {items}, on one clean plate",
              "a healthy plate of greens: {items}", "rabbit food please lol, {items}", "chop {items} and arrange it on a clean plate",
              "a light veggie plate with {items}"),
    "Sandwich": ("two toasted slices of bread with {items} in between", "toast two bread slices and put {items} between them on a plate",
                 "a sammich: toasted bread, {items}", "stack {items} with two slices of toast on a clean plate", "toast two pieces of bread and stack {items} on them",
                 "a toasted lunch thing with {items} inside, on a clean plate"),
    "Breakfast": ("morning food please: {items}, on the {serve}", "I just woke up, get me {items} and set it all on the {serve}",
                  "first meal of the day: {items}, everything on the {serve}", "brunch for one: {items}, put it all on the {serve}", "set up my morning meal on the {serve}: {items}",
                  "{items} on the {serve} to start the day"),
}
# the Driver saying what it is doing, around a step of STEPS
NARRATION = ("ok, going to {step}", "I'll {step} now", "{step} - done", "now: {step}", "doing it: {step}",
             "alright, {step}... finished", "{step}, done that", "just did it: {step}", "ok i {step}",
             "working on it - {step}", "{step}. what next?")
CORRECTIONS = ("sorry, not the {wrong}, the {right}", "wait, I meant the {right}, not the {wrong}",
               "*{right}, not {wrong}", "oops, the {right}!")
SLANG = {"you": "u", "please": "pls", "thanks": "thx", "okay": "k", "are": "r", "going to": "gonna",
         "want to": "wanna", "with": "w/", "because": "cuz", "your": "ur", "right now": "rn"}

# other wordings of the steps (instructions.human_dialogue uses these or STEPS)
HUMAN_STEPS: dict[str, tuple[str, ...]] = {
    "Coffee": ("find a cup", "wash it out", "stick it under the coffee maker", "start the machine"),
    "Water Plant": ("grab something that holds water", "fill it up at the tap", "empty it onto the {x}"),
    "Boil X": ("get a pot and fill it with water", "drop the {x} in", "set it on a burner and turn the heat on"),
    "Plate Of Toast": ("cut a piece of bread", "toast it", "wash a plate", "put the toasted bread on the plate"),
    "Clean All X": ("bring each {x} to the sink", "wash them one by one", "make sure none of the {xs} is left dirty"),
    "N Slices Of X In Y": ("cut the {x} with a knife", "wash the {y}", "put {n} raw piece(s) {prep} it"),
    "N Cooked Slices Of X In Y": ("cut the {x}", "cook {n} piece(s) on the stove or in the microwave",
                                  "move the cooked piece(s) {prep} a clean {y}"),
    "Put All X On Y": ("find every {x} in the room", "move each one {prep} the {y}"),
    "Put All X In One Y": ("choose one {y}", "put all the {xs} {prep} that same {y}"),
    "Salad": ("cut the veggies", "wash a plate", "put {items} on the plate"),
    "Sandwich": ("slice bread and toast two pieces", "slice {items}", "put the toast and {items} on a clean plate"),
    "Breakfast": ("first {first}", "then {second}", "set everything on the {serve}"),
}
# a Driver question and the Commander's answer that carry what makes the task its type
CLARIFY: dict[str, tuple[tuple[str, str], ...]] = {
    "Coffee": (("tea or coffee?", "coffee, from the machine"), ("which cup?", "a clean mug, for coffee")),
    "Water Plant": (("what do I carry the water in?", "anything, a cup or a bowl, just water the {x}"),),
    "Boil X": (("fry it?", "no, boil it in water"), ("microwave ok?", "no, in a pot of water on the stove")),
    "Plate Of Toast": (("anything on the toast?", "nope, just the toast on a plate"),
                       ("how many slices?", "one slice of toast on a plate is enough")),
    "Clean All X": (("just one?", "no, all the {xs} need washing"), ("where do I put them after?", "anywhere, they just need to be clean")),
    "N Slices Of X In Y": (("should I cook them?", "no, raw slices are fine"), ("how many slices?", "{n}, uncooked, {prep} the {y}")),
    "N Cooked Slices Of X In Y": (("raw or cooked?", "cooked please"), ("how many?", "{n}, and cook them before they go {prep} the {y}")),
    "Put All X On Y": (("just the one?", "no, every {x} goes {prep} the {y}"), ("where do they go?", "all of them {prep} the {y}")),
    "Put All X In One Y": (("can I use two {y}s?", "no, just one {y} for all of them"),
                           ("any {y}?", "any, but the same one for every {x}")),
    "Salad": (("cook anything?", "only the potato if there is some, the rest raw"), ("on what?", "a clean plate, all of it")),
    "Sandwich": (("how many slices of toast?", "two, with {items} in between"), ("on a plate?", "yes, the toast and {items} on a clean plate")),
    "Breakfast": (("just the coffee?", "no, all of it: {items}"), ("where should I put it?", "everything on the {serve}")),
}
