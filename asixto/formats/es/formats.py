"""One date format on every dashboard page, in Spanish (templates use SHORT_DATETIME_FORMAT;
the long and short forms are the same on purpose). Times are the server's zone (UTC), named."""

DATETIME_FORMAT = SHORT_DATETIME_FORMAT = "j b Y, H:i T"
DATE_FORMAT = SHORT_DATE_FORMAT = "j b Y"
