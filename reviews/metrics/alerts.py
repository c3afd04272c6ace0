"""The metric warning: an alert per ACTIVE version whose resolution rate over the last
PROCMEM_METRIC_WARNING_DAYS days is significantly below its eval result
(reviews.metrics.rates.resolution_drop_test). An alert is opened once and the `metric_warning`
signal sent once; it clears when a later check no longer finds a significant drop."""

from __future__ import annotations

from datetime import date

from django.db import transaction
from django.utils import timezone

from library.models import Agent, ProcedureVersion, Status

from ..models import MetricAlert
from ..signals import metric_warning
from .rates import resolution_drop_test, setting
from .reads import version_figures, window


def metric_warnings_check(*, agent: Agent, today: date | None = None) -> list[MetricAlert]:
    """Opens an alert (and sends `metric_warning` once, after commit) for every ACTIVE version whose
    resolution rate over the last PROCMEM_METRIC_WARNING_DAYS days is significantly below its eval
    result; clears open alerts whose version recovered or is no longer ACTIVE. Returns the alerts
    opened now."""
    days = setting("PROCMEM_METRIC_WARNING_DAYS", 14)
    start, end = window(days, today=today)
    versions = list(
        ProcedureVersion.objects.filter(procedure__agent=agent, status=Status.ACTIVE).select_related(
            "procedure__intent", "procedure__agent"
        )
    )
    figures = {f.version.pk: f for f in version_figures(versions, start, end)}
    opened: list[MetricAlert] = []
    with transaction.atomic():
        open_alerts = {
            a.version_id: a
            for a in MetricAlert.objects.select_for_update().filter(
                version__procedure__agent=agent, cleared_at__isnull=True
            )
        }
        for version in versions:
            fig = figures[version.pk]
            test = resolution_drop_test(observed=fig.with_rate, expected=fig.eval_rate)
            if test.significant and version.pk not in open_alerts:
                message = (
                    f"{version.procedure.key} v{version.number} ({agent.name}): resolution rate over the last "
                    f"{days} days fell significantly below its eval result: {test.reason}."
                )
                alert = MetricAlert.objects.create(
                    version=version,
                    message=message,
                    figures={
                        "observed": [test.observed.hits, test.observed.total],
                        "expected": [test.expected.hits, test.expected.total],
                        "z": test.z,
                        "p": test.p_value,
                        "from": start.isoformat(),
                        "to": end.isoformat(),
                    },
                )
                opened.append(alert)
                transaction.on_commit(
                    lambda vid=version.pk, msg=message: metric_warning.send(
                        sender=MetricAlert, version_id=vid, message=msg
                    ),
                    robust=True,
                )
            elif not test.significant and version.pk in open_alerts:
                open_alerts[version.pk].cleared_at = timezone.now()
                open_alerts[version.pk].save(update_fields=["cleared_at"])
        active_ids = {v.pk for v in versions}
        for version_id, alert in open_alerts.items():
            if version_id not in active_ids:
                alert.cleared_at = timezone.now()
                alert.save(update_fields=["cleared_at"])
    return opened
