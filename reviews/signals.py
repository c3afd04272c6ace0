"""Signals of the review side itself: sent and received inside `reviews`, after the transaction
that caused them commits. (What the library announces is in library/signals.py.)"""

from django.dispatch import Signal

# kwargs: version_id, message. A metric of an ACTIVE version fell significantly below its eval result.
# Sent by the metric warnings check; reviews/notifications.py tells the version's admins and approvers.
metric_warning = Signal()
