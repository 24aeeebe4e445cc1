"""Tenancy: the custom user model first, then endpoints, their keys, and settings.

The tables come from the models; the CHECKs Django cannot express are added in SQL at the end.
"""

import uuid

import django.contrib.auth.models
import django.contrib.auth.validators
import django.contrib.postgres.fields
import django.core.validators
import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.CreateModel(
            name="Setting",
            fields=[
                ("key", models.TextField(primary_key=True, serialize=False)),
                ("value", models.JSONField()),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={
                "db_table": "settings",
                "ordering": ["key"],
            },
        ),
        migrations.CreateModel(
            name="Human",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("password", models.CharField(max_length=128, verbose_name="password")),
                (
                    "last_login",
                    models.DateTimeField(blank=True, null=True, verbose_name="last login"),
                ),
                (
                    "is_superuser",
                    models.BooleanField(
                        default=False,
                        help_text="Designates that this user has all permissions without explicitly assigning them.",
                        verbose_name="superuser status",
                    ),
                ),
                (
                    "username",
                    models.CharField(
                        error_messages={"unique": "A user with that username already exists."},
                        help_text="Required. 150 characters or fewer. Letters, digits and @/./+/-/_ only.",
                        max_length=150,
                        unique=True,
                        validators=[django.contrib.auth.validators.UnicodeUsernameValidator()],
                        verbose_name="username",
                    ),
                ),
                (
                    "first_name",
                    models.CharField(blank=True, max_length=150, verbose_name="first name"),
                ),
                (
                    "last_name",
                    models.CharField(blank=True, max_length=150, verbose_name="last name"),
                ),
                (
                    "email",
                    models.EmailField(blank=True, max_length=254, verbose_name="email address"),
                ),
                (
                    "is_staff",
                    models.BooleanField(
                        default=False,
                        help_text="Designates whether the user can log into this admin site.",
                        verbose_name="staff status",
                    ),
                ),
                (
                    "is_active",
                    models.BooleanField(
                        default=True,
                        help_text="Designates whether this user should be treated as active. Unselect this instead of deleting accounts.",
                        verbose_name="active",
                    ),
                ),
                (
                    "date_joined",
                    models.DateTimeField(
                        default=django.utils.timezone.now, verbose_name="date joined"
                    ),
                ),
                (
                    "groups",
                    models.ManyToManyField(
                        blank=True,
                        help_text="The groups this user belongs to. A user will get all permissions granted to each of their groups.",
                        related_name="user_set",
                        related_query_name="user",
                        to="auth.group",
                        verbose_name="groups",
                    ),
                ),
                (
                    "user_permissions",
                    models.ManyToManyField(
                        blank=True,
                        help_text="Specific permissions for this user.",
                        related_name="user_set",
                        related_query_name="user",
                        to="auth.permission",
                        verbose_name="user permissions",
                    ),
                ),
            ],
            options={
                "verbose_name": "human",
                "verbose_name_plural": "humans",
                "db_table": "humans",
            },
            managers=[
                ("objects", django.contrib.auth.models.UserManager()),
            ],
        ),
        migrations.CreateModel(
            name="Endpoint",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                (
                    "slug",
                    models.SlugField(
                        max_length=64,
                        unique=True,
                        validators=[
                            django.core.validators.RegexValidator(
                                "^[a-z0-9][a-z0-9_-]*$",
                                "Use lowercase letters, digits, '-' and '_', starting with a letter or digit.",
                            )
                        ],
                    ),
                ),
                ("name", models.TextField()),
                (
                    "verbs",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.TextField(
                            choices=[
                                ("list_todos", "List Todos"),
                                ("get_todo", "Get Todo"),
                                ("claim_next", "Claim Next"),
                                ("claim", "Claim"),
                                ("heartbeat", "Heartbeat"),
                                ("complete", "Complete"),
                                ("fail", "Fail"),
                                ("release", "Release"),
                            ]
                        ),
                        blank=True,
                        default=list,
                    ),
                ),
                ("push_url", models.URLField(blank=True, max_length=2048, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("revoked_at", models.DateTimeField(blank=True, editable=False, null=True)),
                (
                    "owner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="endpoints",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "db_table": "endpoints",
                "ordering": ["slug"],
            },
        ),
        migrations.CreateModel(
            name="EndpointKey",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("prefix", models.TextField(editable=False)),
                ("key_hash", models.BinaryField(unique=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("last_used_at", models.DateTimeField(blank=True, editable=False, null=True)),
                ("revoked_at", models.DateTimeField(blank=True, editable=False, null=True)),
                (
                    "endpoint",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="keys",
                        to="switchboard.endpoint",
                    ),
                ),
            ],
            options={
                "db_table": "endpoint_keys",
                "ordering": ["-created_at"],
            },
        ),
        migrations.RunSQL(
            sql="""
            -- An endpoint's scope holds only verbs the product knows (switchboard.models.Verb).
            ALTER TABLE endpoints ADD CONSTRAINT endpoints_known_verbs CHECK (
                verbs <@ ARRAY['list_todos','get_todo','claim_next','claim','heartbeat',
                               'complete','fail','release']::text[]);
            ALTER TABLE endpoints ADD CONSTRAINT endpoints_slug_format
                CHECK (slug ~ '^[a-z0-9][a-z0-9_-]*$');
            -- Only the SHA-256 of a key is stored; the prefix is for display.
            ALTER TABLE endpoint_keys ADD CONSTRAINT endpoint_keys_hash_len
                CHECK (octet_length(key_hash) = 32);
            ALTER TABLE endpoint_keys ADD CONSTRAINT endpoint_keys_prefix_short
                CHECK (prefix LIKE 'sbk\\_%' AND length(prefix) <= 16);
            """,
            reverse_sql="""
            ALTER TABLE endpoint_keys DROP CONSTRAINT endpoint_keys_prefix_short;
            ALTER TABLE endpoint_keys DROP CONSTRAINT endpoint_keys_hash_len;
            ALTER TABLE endpoints DROP CONSTRAINT endpoints_slug_format;
            ALTER TABLE endpoints DROP CONSTRAINT endpoints_known_verbs;
            """,
        ),
    ]
