"""Pinhole camera of the agent: projection of world points and the in-view test.

Shared by the renderer (what is drawn) and the action rules (what may be interacted with), so
that "visible" means the same thing in the frame and in the simulator. The camera sits at
``EYE_HEIGHT`` above the agent's cell centre, looks along the yaw, tilted by the pitch
(positive = down), with a square image and ``FOV`` degrees of field of view.
"""

from __future__ import annotations

import math

from icalkit.envs.household.state import AgentPose

FOV = 90.0
EYE_HEIGHT = 1.5
NEAR = 0.05


def camera_axes(pose: AgentPose) -> tuple[tuple[float, float, float], ...]:
    """Forward, right and up unit vectors of the camera in world coordinates."""
    yaw = math.radians(pose.yaw)
    pitch = math.radians(pose.pitch)
    fx, fz = math.sin(yaw), math.cos(yaw)
    forward = (fx * math.cos(pitch), -math.sin(pitch), fz * math.cos(pitch))
    right = (fz, 0.0, -fx)
    up = (fx * math.sin(pitch), math.cos(pitch), fz * math.sin(pitch))
    return forward, right, up


def to_camera(pose: AgentPose, point: tuple[float, float, float]) -> tuple[float, float, float]:
    """World point -> camera coordinates (right, up, depth along the view direction)."""
    forward, right, up = camera_axes(pose)
    dx, dy, dz = point[0] - pose.x, point[1] - EYE_HEIGHT, point[2] - pose.z
    return (
        dx * right[0] + dy * right[1] + dz * right[2],
        dx * up[0] + dy * up[1] + dz * up[2],
        dx * forward[0] + dy * forward[1] + dz * forward[2],
    )


def project(pose: AgentPose, point: tuple[float, float, float], size: int) -> tuple[float, float, float] | None:
    """World point -> (u, v, depth) in pixels of a ``size``×``size`` image, or None if behind.

    ``u`` grows to the right, ``v`` grows downwards; the point may fall outside the image.
    """
    cx, cy, depth = to_camera(pose, point)
    if depth <= NEAR:
        return None
    focal = (size / 2) / math.tan(math.radians(FOV / 2))
    return size / 2 + focal * cx / depth, size / 2 - focal * cy / depth, depth


def in_view(pose: AgentPose, point: tuple[float, float, float], margin: float = 0.0) -> bool:
    """Whether a world point falls inside the camera frustum (``margin`` in normalised units)."""
    cx, cy, depth = to_camera(pose, point)
    if depth <= NEAR:
        return False
    half = math.tan(math.radians(FOV / 2)) * depth * (1 + margin)
    return abs(cx) <= half and abs(cy) <= half
