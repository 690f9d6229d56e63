"""AI2-THOR adapter: TEACh primitives -> Controller calls, THOR metadata -> text state / scene graph /
TEACh goal checks, navigation over reachable positions. ``ai2thor`` is imported only by ``env``."""
