"""One date format on every dashboard page, in English (see the Spanish module)."""

DATETIME_FORMAT = SHORT_DATETIME_FORMAT = "M j, Y, H:i T"
DATE_FORMAT = SHORT_DATE_FORMAT = "M j, Y"

# What people type in the dashboard's date fields (asixto/date_fields.py): the first is how a
# field shows its value and its hint (as an English-speaking browser would ask for it); the date
# as pages show it ("Dec 31, 2026") is read too, and ISO (2026-12-31), in every language.
DATE_INPUT_FORMATS = ["%m/%d/%Y", "%m/%d/%y", "%b %d, %Y", "%b %d %Y", "%B %d, %Y", "%B %d %Y", "%d %b %Y", "%d %B %Y"]
DATETIME_INPUT_FORMATS = ["%m/%d/%Y %H:%M", "%m/%d/%Y %H:%M:%S", "%m/%d/%y %H:%M", "%m/%d/%Y"]
