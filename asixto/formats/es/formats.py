"""One date format on every dashboard page, in Spanish (templates use SHORT_DATETIME_FORMAT;
the long and short forms are the same on purpose). Times are the server's zone (UTC), named."""

DATETIME_FORMAT = SHORT_DATETIME_FORMAT = "j b Y, H:i T"
DATE_FORMAT = SHORT_DATE_FORMAT = "j b Y"

# What people type in the dashboard's date fields (asixto/date_fields.py): the first is how a
# field shows its value and its hint; ISO (2026-12-31) is read too, in every language.
DATE_INPUT_FORMATS = ["%d/%m/%Y", "%d/%m/%y"]
DATETIME_INPUT_FORMATS = ["%d/%m/%Y %H:%M", "%d/%m/%Y %H:%M:%S", "%d/%m/%y %H:%M", "%d/%m/%Y"]
