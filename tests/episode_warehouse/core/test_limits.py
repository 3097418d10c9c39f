"""Input limits: defaults, overrides from one setting, and clear errors for bad ones."""

import pytest

from episode_warehouse.errors import ConfigError
from episode_warehouse.limits import InputLimits


def test_defaults_and_overrides():
    limits = InputLimits.parse("max_steps=5, max_expansion=9")
    assert (limits.max_steps, limits.max_expansion) == (5, 9)
    assert limits.max_image_pixels == InputLimits().max_image_pixels == 4096 * 4096
    assert InputLimits.parse("") == InputLimits() == InputLimits.parse(None)
    assert limits.decoded_budget(1000) == 9000 + limits.expansion_slack_bytes


@pytest.mark.parametrize("text", ["max_stepz=5", "max_steps=-1", "max_steps=lots", "max_steps"])
def test_bad_settings_name_the_variable(text):
    with pytest.raises(ConfigError, match="EPISODE_WAREHOUSE_LIMITS: not a limit setting"):
        InputLimits.parse(text)
