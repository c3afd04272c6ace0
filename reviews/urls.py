from django.urls import path

from . import views

app_name = "reviews"

urlpatterns = [
    path("queue/", views.queue, name="queue"),
]
