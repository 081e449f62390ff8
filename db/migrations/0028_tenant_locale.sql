-- How a tenant's times are spoken to its callers: en-US ("Friday,
-- December 4 at 9:30 AM") or en-GB ("Friday 4 December at 09:30"). Set
-- with `oncecall tenant create --locale` or `oncecall tenant update`;
-- without one, a tenant in a zone of the United States speaks en-US and
-- any other en-GB (internal/schedule DefaultLocale, whose list of zones
-- this backfill repeats for the tenants that exist).
ALTER TABLE tenants ADD COLUMN locale text NOT NULL DEFAULT 'en-GB' CHECK (locale IN ('en-US', 'en-GB'));

UPDATE tenants SET locale = 'en-US'
WHERE timezone LIKE 'US/%' OR timezone IN (
    'America/Adak', 'America/Anchorage', 'America/Boise', 'America/Chicago', 'America/Denver', 'America/Detroit',
    'America/Indiana/Indianapolis', 'America/Indiana/Knox', 'America/Indiana/Marengo', 'America/Indiana/Petersburg',
    'America/Indiana/Tell_City', 'America/Indiana/Vevay', 'America/Indiana/Vincennes', 'America/Indiana/Winamac',
    'America/Juneau', 'America/Kentucky/Louisville', 'America/Kentucky/Monticello', 'America/Los_Angeles',
    'America/Menominee', 'America/Metlakatla', 'America/New_York', 'America/Nome', 'America/North_Dakota/Beulah',
    'America/North_Dakota/Center', 'America/North_Dakota/New_Salem', 'America/Phoenix', 'America/Sitka',
    'America/Yakutat', 'Pacific/Honolulu',
    'America/Atka', 'America/Fort_Wayne', 'America/Indianapolis', 'America/Knox_IN', 'America/Louisville',
    'America/Shiprock', 'Navajo'
);
