"""Where the sandbox market sells: Availability Zones per region, zone ids, region names."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# Every region the catalog names, with AZ letters as AWS has them (ap-northeast-1 has no b).
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

# How far each region's prices sit from us-east-1's: the catalog has most figures for one
# region only, and a search across regions needs them to differ as AWS's do.
_PRICE_FACTORS = {
    "us-east-1": 1.0,
    "us-east-2": 0.97,
    "us-west-2": 1.03,
    "ap-northeast-1": 1.21,
    "ap-south-1": 1.09,
    "eu-north-1": 1.06,
    "eu-west-2": 1.14,
}


def regional_usd(usd: float, figure_region: str, region: str) -> float:
    """A catalog figure for `figure_region`, as the sandbox prices it in `region`."""
    if figure_region == region:
        return usd
    factor = _PRICE_FACTORS.get(region, 1.0) / _PRICE_FACTORS.get(figure_region, 1.0)
    return round(usd * factor, 4)


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
    """`us-east-1a` -> `use1-az1`. Real zone ids differ per account; this one is stable."""
    region, letter = zone[:-1], zone[-1]
    area, direction, number = region.split("-", 2)
    return f"{area}{_DIRECTIONS.get(direction, direction[:2])}{number}-az{ord(letter) - 96}"


def region_location(region: str) -> str:
    return _LOCATIONS.get(region, region)


def usage_prefix(region: str) -> str:
    return _USAGE_PREFIXES.get(region, region.upper())
