"""factory-boy factories for the read models. Todos in a state other than pending are reached
through real transitions (``todos.lifecycle``), never by writing the state column here."""

from __future__ import annotations

import factory

from switchboard.models import DRAIN_VERBS, Endpoint, Human
from todos.models import Rule, Source


class HumanFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Human
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"operator{n}")
    email = factory.LazyAttribute(lambda h: f"{h.username}@example.test")
    password = factory.django.Password("correct horse battery staple")


class EndpointFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Endpoint

    owner = factory.SubFactory(HumanFactory)
    slug = factory.Sequence(lambda n: f"agent-{n}")
    name = factory.LazyAttribute(lambda e: f"Agent {e.slug}")
    verbs = factory.LazyFunction(lambda: list(DRAIN_VERBS))


class SourceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Source

    owner = factory.SubFactory(HumanFactory)
    slug = factory.Sequence(lambda n: f"source-{n}")
    name = factory.LazyAttribute(lambda s: f"Source {s.slug}")
    secret = "s3cret-for-tests"
    verify = True


class RuleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Rule

    source = factory.SubFactory(SourceFactory)
    endpoint = factory.SubFactory(EndpointFactory, owner=factory.SelfAttribute("..source.owner"))
    queue = "default"
    match = factory.LazyFunction(dict)
