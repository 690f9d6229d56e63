"""Household action API exposed to generated programs (object mode and flat LLM-Planner mode)."""

from icalkit.agents.api.docs import api_documentation
from icalkit.agents.api.household import ATTRIBUTES, InteractionObject, bind_api, canonical_class
from icalkit.agents.api.runtime import (
    ActionFailed,
    ApiCall,
    ApiConfig,
    ApiRuntime,
    ApiUsageError,
    BudgetExceeded,
    Primitive,
)

__all__ = [
    "ATTRIBUTES", "ActionFailed", "ApiCall", "ApiConfig", "ApiRuntime", "ApiUsageError",
    "BudgetExceeded", "InteractionObject", "Primitive", "api_documentation", "bind_api",
    "canonical_class",
]
