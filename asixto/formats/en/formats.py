"""One date format on every dashboard page, in English (see the Spanish module)."""

DATETIME_FORMAT = SHORT_DATETIME_FORMAT = "M j, Y, H:i T"
DATE_FORMAT = SHORT_DATE_FORMAT = "M j, Y"
