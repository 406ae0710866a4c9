"""REST endpoints for a tenant's people (T4): admin keys only (the default permission), so a
channel key can neither list nor create users."""

from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import services
from accounts.api import serializers as s
from accounts.models import User
from asixto.errors import ApplicationError


def _dashboard_url(request) -> str:
    return services.dashboard_url(tenant=request.tenant)


LAST_ADMIN = OpenApiResponse(description="The person is the last active admin (`last_admin`).")


class UserListCreateView(generics.ListAPIView):
    serializer_class = s.UserSerializer

    def get_queryset(self):
        return User.objects.order_by("username")

    @extend_schema(
        request=s.UserCreateSerializer, responses={201: s.UserCreatedSerializer},
        description="Add a person with a role. Without a password, an invitation is e-mailed (email is then required).",
    )
    def post(self, request):
        data = s.UserCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = services.user_create(**data.validated_data, invite_base_url=_dashboard_url(request))
        return Response(s.UserCreatedSerializer(user).data, status=status.HTTP_201_CREATED)


class UserDetailView(APIView):
    @extend_schema(responses=s.UserSerializer)
    def get(self, request, pk):
        return Response(s.UserSerializer(get_object_or_404(User, pk=pk)).data)

    @extend_schema(
        request=s.UserUpdateSerializer, responses={200: s.UserSerializer, 409: LAST_ADMIN},
        description="Change the role, the e-mail address, or access. The last active admin cannot be demoted or deactivated (409).",
    )
    def patch(self, request, pk):
        user = get_object_or_404(User, pk=pk)
        data = s.UserUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(s.UserSerializer(services.user_update(user=user, **data.validated_data)).data)

    @extend_schema(responses={200: s.UserSerializer, 409: LAST_ADMIN}, description="Deactivate the person (the record stays). Not the last active admin (409).")
    def delete(self, request, pk):
        return Response(s.UserSerializer(services.user_deactivate(user=get_object_or_404(User, pk=pk))).data)


class UserPasswordLinkView(APIView):
    @extend_schema(request=None, responses={
        202: s.UserSerializer,
        400: OpenApiResponse(description="The person has no e-mail address or is deactivated (`no_email`)."),
        503: OpenApiResponse(description="The mail server did not accept the e-mail (`mail_failed`); try again later."),
    }, description="E-mail the person a link to choose a password.")
    def post(self, request, pk):
        user = get_object_or_404(User, pk=pk)
        invitation = not user.has_usable_password()
        if not user.is_active or not user.email:
            raise ApplicationError(_("This person has no e-mail address or is deactivated."), code="no_email")
        if not services.password_link_send(user=user, base_url=_dashboard_url(request), invitation=invitation):
            raise ApplicationError(_("The mail server did not accept the e-mail. Try again later."), code="mail_failed", status_code=503)
        return Response(s.UserSerializer(user).data, status=status.HTTP_202_ACCEPTED)
