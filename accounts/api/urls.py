from django.urls import path

from accounts.api import views

urlpatterns = [
    path("users", views.UserListCreateView.as_view(), name="user-list"),
    path("users/<int:pk>", views.UserDetailView.as_view(), name="user-detail"),
    path("users/<int:pk>/password-link", views.UserPasswordLinkView.as_view(), name="user-password-link"),
]
