"""Simulators behind one interface; the embedded household simulator is registered with gymnasium.

``gymnasium.make("icalkit/Household-v0", render_obs=False)`` or :func:`icalkit.envs.factory.make_env`.
"""

import gymnasium

HOUSEHOLD_ENV_ID = "icalkit/Household-v0"

if HOUSEHOLD_ENV_ID not in gymnasium.registry:
    gymnasium.register(id=HOUSEHOLD_ENV_ID, entry_point="icalkit.envs.household.env:HouseholdEnv")
