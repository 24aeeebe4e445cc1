"""sb_token_count(jsonb): a span attribute's token count, or NULL when it holds none.

The trail page sums each attempt's token counts in SQL (otlp/sql/spans_for_todo.sql) instead of
decoding every span's attributes in Python. A count is a JSON number that is a non-negative
integer; a string, a boolean, a fraction or a negative number counts nothing. A one-expression
IMMUTABLE SQL function, so the planner inlines it: no call overhead per span.
"""

from django.db import migrations

FORWARD = """
CREATE FUNCTION sb_token_count(value jsonb) RETURNS numeric
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN jsonb_typeof(value) = 'number'
                 AND value::numeric >= 0
                 AND scale(value::numeric) = 0
                THEN value::numeric END;
"""
REVERSE = "DROP FUNCTION sb_token_count(jsonb);"


class Migration(migrations.Migration):
    dependencies = [("otlp", "0001_spans")]

    operations = [migrations.RunSQL(FORWARD, REVERSE)]
