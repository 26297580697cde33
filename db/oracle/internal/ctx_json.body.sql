--liquibase formatted sql

--changeset ctxasm:ora-pkg-ctx-json-body dbms:oracle runOnChange:true endDelimiter:/ stripComments:false
create or replace package body ctx_json is
   co_separator constant varchar2(1) := ',';
   -- vector text: '[x,y,...]', each number plain or with an exponent (as PostgreSQL's vector input reads it)
   co_vector_pattern   constant varchar2(300) :=
      '^\[[[:space:]]*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?'
      || '([[:space:]]*,[[:space:]]*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?)*[[:space:]]*\]$';

   -- PostgreSQL's ->> of one member: a string unquoted, another value as JSON text, NULL for null or absent
   function member_text(in_object in json_object_t, in_key in varchar2) return varchar2 is
      l_value json_element_t;
   begin
      l_value := in_object.get(in_key);
      if l_value is null or l_value.is_null() then
         return null;
      elsif l_value.is_string() then
         return in_object.get_string(in_key);
      end if;
      return l_value.to_string();
   end member_text;

   -- one member as canonical JSON text (objects with their keys sorted), NULL when absent
   function canonical_member(in_object in json_object_t, in_key in varchar2) return clob is
      l_value json_element_t;
      l_text  clob;
   begin
      l_value := in_object.get(in_key);
      if l_value is null then
         return null;
      end if;
      l_text := l_value.to_clob();
      if l_value.is_object() or l_value.is_array() then
         select json_serialize(l_text returning clob ordered)
           into l_text
           from dual;
      end if;
      return l_text;
   end canonical_member;

   -- Two JSON arrays of this package's own making (no white space around the brackets) as one; NULL counts as
   -- the empty array.
   function array_union(in_first in clob, in_second in clob) return clob is
      l_first_length  integer;
      l_second_length integer;
   begin
      l_first_length := nvl(sys.dbms_lob.getlength(lob_loc => in_first), 0);
      l_second_length := nvl(sys.dbms_lob.getlength(lob_loc => in_second), 0);
      if l_second_length <= length(co_empty_array) then
         return case when l_first_length > 0 then in_first else to_clob(co_empty_array) end;
      elsif l_first_length <= length(co_empty_array) then
         return in_second;
      end if;
      return substr(in_first, 1, l_first_length - 1) || co_separator || substr(in_second, 2);
   end array_union;

   -- The keys of a JSON object, sorted: alphabetically (in_by_length false: the unknown_intent message) or as
   -- PostgreSQL's jsonb keeps them, by length and then by bytes (the order candidate_limits is checked in).
   function sorted_keys(in_object in json_object_t, in_by_length in boolean) return t_key_tab is
      l_keys   json_key_list;
      l_sorted t_key_tab := t_key_tab();
      l_key    varchar2(32767);
      l_pos    pls_integer;
      l_before boolean;
   begin
      l_keys := in_object.get_keys();
      if l_keys is null then
         return l_sorted;
      end if;
      for i in 1 .. l_keys.count loop
         l_sorted.extend();
         l_sorted(l_sorted.last) := l_keys(i);
      end loop;
      -- insertion sort: a budget has a handful of keys
      for i in 2 .. l_sorted.count loop
         l_key := l_sorted(i);
         l_pos := i - 1;
         loop
            exit when l_pos < 1;
            if in_by_length then
               l_before := length(l_sorted(l_pos)) > length(l_key)
                           or (length(l_sorted(l_pos)) = length(l_key) and l_sorted(l_pos) > l_key);
            else
               l_before := l_sorted(l_pos) > l_key;
            end if;
            exit when not l_before;
            l_sorted(l_pos + 1) := l_sorted(l_pos);
            l_pos := l_pos - 1;
         end loop;
         l_sorted(l_pos + 1) := l_key;
      end loop;
      return l_sorted;
   end sorted_keys;

   -- the keys of a JSON object in alphabetical order, joined with ', ' (the unknown_intent message)
   function listed_keys(in_object in json_object_t) return varchar2 is
      l_keys t_key_tab;
      l_text varchar2(32767);
   begin
      l_keys := sorted_keys(in_object => in_object, in_by_length => false);
      for i in 1 .. l_keys.count loop
         l_text := substr(l_text || case when i > 1 then ', ' end || l_keys(i), 1, 4000);
      end loop;
      return l_text;
   end listed_keys;

   -- a member of a JSON object as a number, NULL when it is absent or not a number
   function number_member(in_object in json_object_t, in_key in varchar2) return number is
      l_value json_element_t;
   begin
      if in_object is null then
         return null;
      end if;
      l_value := in_object.get(in_key);
      if l_value is null or not l_value.is_number() then
         return null;
      end if;
      return in_object.get_number(in_key);
   end number_member;

   -- a member of a JSON object as an object, NULL when it is absent or not an object
   function object_member(in_object in json_object_t, in_key in varchar2) return json_object_t is
      l_value json_element_t;
   begin
      if in_object is null then
         return null;
      end if;
      l_value := in_object.get(in_key);
      if l_value is null or not l_value.is_object() then
         return null;
      end if;
      return treat(l_value as json_object_t);
   end object_member;

   -- the member in_key of in_value when in_value is an object, else NULL
   function member_of(in_value in json_element_t, in_key in varchar2) return json_element_t is
      l_object json_object_t;
   begin
      if in_value is null or not in_value.is_object() then
         return null;
      end if;
      l_object := treat(in_value as json_object_t);
      return l_object.get(in_key);
   end member_of;

   -- PostgreSQL's ->> of one element of a reference: a string unquoted, another value as JSON text
   function element_text(in_ref in json_array_t, in_index in pls_integer) return varchar2 is
      l_value json_element_t;
   begin
      l_value := in_ref.get(in_index);
      if l_value is null or l_value.is_null() then
         return null;
      elsif l_value.is_string() then
         return in_ref.get_string(in_index);
      end if;
      return l_value.to_string();
   end element_text;

   function is_listed(in_list in t_text_tab, in_text in varchar2) return boolean is
   begin
      for i in 1 .. in_list.count loop
         if in_list(i) = in_text then
            return true;
         end if;
      end loop;
      return false;
   end is_listed;

   function iso_utc(in_timestamp in timestamp with time zone) return varchar2 deterministic is
      co_utc_offset constant varchar2(6) := '+00:00';
      l_utc      timestamp(6);
      l_fraction varchar2(9);
   begin
      if in_timestamp is null then
         return null;
      end if;
      l_utc := sys_extract_utc(in_timestamp);
      l_fraction := rtrim(to_char(l_utc, 'FF6'), '0');
      return to_char(l_utc, 'YYYY-MM-DD"T"HH24:MI:SS')
             || case when l_fraction is not null then '.' || l_fraction end
             || co_utc_offset;
   end iso_utc;

   function message_time(in_timestamp in timestamp with time zone) return varchar2 is
      l_iso varchar2(40);
   begin
      l_iso := iso_utc(in_timestamp => in_timestamp);
      return replace(substr(l_iso, 1, length(l_iso) - 3), 'T', ' ');
   end message_time;

   function is_vector_text(in_text in clob, in_dimensions in pls_integer) return boolean is
   begin
      return in_text is not null
             and regexp_like(in_text, co_vector_pattern)
             and regexp_count(in_text, co_separator) = in_dimensions - 1;
   end is_vector_text;

end ctx_json;
/
