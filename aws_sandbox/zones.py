"""Where the sandbox market sells: Availability Zones per region, zone ids, region names."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# The market's regions, with AZ letters as AWS has them (ap-northeast-1 has no b).
DEFAULT_ZONES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        region: tuple(f"{region}{letter}" for letter in letters)
        for region, letters in {
            "us-east-1": "abcdef",
            "us-east-2": "abc",
            "us-west-2": "abcd",
            "ap-northeast-1": "acd",
            "ap-south-1": "abc",
            "eu-north-1": "abc",
            "eu-west-2": "abc",
        }.items()
    }
)

# Local Zones beside some regions (EC2 User Guide, "Local Zones"): listed by
# DescribeAvailabilityZones with ZoneType local-zone, opted in or not; they sell none of
# the market's GPU types.
LOCAL_ZONES: Mapping[str, tuple[tuple[str, str], ...]] = MappingProxyType(
    {
        "us-east-1": (("us-east-1-bos-1a", "opted-in"), ("us-east-1-mia-2a", "not-opted-in")),
        "us-west-2": (("us-west-2-lax-1a", "opted-in"),),
    }
)

# The Pricing API's `location` attribute.
_LOCATIONS = {
    "us-east-1": "US East (N. Virginia)",
    "us-east-2": "US East (Ohio)",
    "us-west-2": "US West (Oregon)",
    "ap-northeast-1": "Asia Pacific (Tokyo)",
    "ap-south-1": "Asia Pacific (Mumbai)",
    "eu-north-1": "EU (Stockholm)",
    "eu-west-2": "EU (London)",
}

# The Pricing API's usagetype prefixes: irregular (ap-south-1 is APS3), so listed.
_USAGE_PREFIXES = {
    "us-east-1": "USE1",
    "us-east-2": "USE2",
    "us-west-2": "USW2",
    "ap-northeast-1": "APN1",
    "ap-south-1": "APS3",
    "eu-north-1": "EUN1",
    "eu-west-2": "EUW2",
}

_DIRECTIONS = {
    "east": "e",
    "west": "w",
    "north": "n",
    "south": "s",
    "central": "c",
    "northeast": "ne",
    "northwest": "nw",
    "southeast": "se",
    "southwest": "sw",
}


def zone_id(zone: str) -> str:
    """`us-east-1a` -> `use1-az1`, `us-east-1-bos-1a` -> `use1-bos1-az1`. Real zone ids
    differ per account; these are stable."""
    parts = zone.split("-")
    if len(parts) == 5:  # a Local Zone: region-city-number+letter
        region = "-".join(parts[:3])
        city, rest = parts[3], parts[4]
        return f"{zone_id(region + 'a').split('-')[0]}-{city}{rest[:-1]}-az1"
    region, letter = zone[:-1], zone[-1]
    area, direction, number = region.split("-", 2)
    return f"{area}{_DIRECTIONS.get(direction, direction[:2])}{number}-az{ord(letter) - 96}"


def region_location(region: str) -> str:
    return _LOCATIONS.get(region, region)


def usage_prefix(region: str) -> str:
    return _USAGE_PREFIXES.get(region, region.upper())
