"""REST endpoints for skills (R12), admin keys only (T3). Each
tenant sees its own (T1): another tenant's skill is a 404."""

from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from asixto.api import StrictModelSerializer
from runtime.builtins.models import Skill
from runtime.builtins.skills import skill_save, unknown_tools

MAX_SKILL_TOOLS = 30


class SkillSerializer(StrictModelSerializer):
    tools = serializers.ListField(child=serializers.CharField(max_length=250), max_length=MAX_SKILL_TOOLS,
                                  required=False, help_text=gettext_lazy(
                                      "Model-visible names of catalog tools and built-in tools (asixto__…)."))

    class Meta:
        model = Skill
        fields = ["id", "name", "description", "triggers", "instructions", "tools", "enabled", "created_at", "updated_at"]
        read_only_fields = ["id", "created_at", "updated_at"]

    def validate_tools(self, names):
        unknown = unknown_tools(names)
        if unknown:
            raise serializers.ValidationError(_("Unknown tools: %(names)s.") % {"names": ", ".join(unknown[:10])})
        return list(dict.fromkeys(names))


class SkillListCreateView(generics.ListAPIView):
    serializer_class = SkillSerializer
    queryset = Skill.objects.all()

    @extend_schema(request=SkillSerializer, responses={201: SkillSerializer})
    def post(self, request):
        serializer = SkillSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        skill = skill_save(data=serializer.validated_data)
        return Response(SkillSerializer(skill).data, status=201)


class SkillDetailView(APIView):
    serializer_class = SkillSerializer

    def get(self, request, pk):
        return Response(SkillSerializer(get_object_or_404(Skill, pk=pk)).data)

    def patch(self, request, pk):
        skill = get_object_or_404(Skill, pk=pk)
        serializer = SkillSerializer(skill, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        return Response(SkillSerializer(skill_save(skill=skill, data=serializer.validated_data)).data)

    def delete(self, request, pk):
        get_object_or_404(Skill, pk=pk).delete()
        return Response(status=204)
