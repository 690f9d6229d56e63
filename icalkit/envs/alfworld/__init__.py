"""ALFWorld backend: TextWorld's PDDL engine with ALFRED's domain and grammar (the ``alfworld`` package).

``games`` writes PDDL problems + TextWorld game files from the embedded simulator's scenes for the
ALFWorld task types; ``env`` plays them (or the official ALFWorld game files) behind the household
Env interface; ``facts`` turns the engine's PDDL state into THOR-style metadata for the goal checker.
"""
