package io.github.pirexbench.jparest.customer;

import static org.mockito.ArgumentMatchers.anyLong;
import static org.mockito.ArgumentMatchers.anyString;
import static org.mockito.Mockito.never;
import static org.mockito.Mockito.verify;
import static org.mockito.Mockito.verifyNoInteractions;
import static org.mockito.Mockito.when;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.put;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import io.github.pirexbench.jparest.system.ServiceTimeFilter;
import java.time.LocalDate;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.autoconfigure.web.servlet.WebMvcTest;
import org.springframework.context.annotation.Import;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.http.MediaType;
import org.springframework.test.context.bean.override.mockito.MockitoBean;
import org.springframework.test.web.servlet.MockMvc;

/** The three operations over HTTP, without a database (the service is mocked). */
@WebMvcTest(CustomerController.class)
@Import(RandomCustomers.class)
class CustomerControllerTests {

  @Autowired MockMvc mvc;

  @MockitoBean CustomerService service;

  private static Customer anna() {
    return new Customer(
        42L, "Anna", "Meyer", "Gartenweg 3", "31134", "Hildesheim", LocalDate.of(1980, 5, 17));
  }

  @Test
  void createRandomReturnsACustomerWithoutTheDatabase() throws Exception {
    mvc.perform(post("/customers/random"))
        .andExpect(status().isOk())
        .andExpect(jsonPath("$.id").isNumber())
        .andExpect(jsonPath("$.firstName").isString())
        .andExpect(jsonPath("$.lastName").isString())
        .andExpect(jsonPath("$.dateOfBirth").isString())
        .andExpect(header().exists(ServiceTimeFilter.HEADER));
    verifyNoInteractions(service);
  }

  @Test
  void readReturnsTheCustomer() throws Exception {
    when(service.read(42L)).thenReturn(Optional.of(anna()));
    mvc.perform(get("/customers/42"))
        .andExpect(status().isOk())
        .andExpect(jsonPath("$.id").value(42))
        .andExpect(jsonPath("$.lastName").value("Meyer"))
        .andExpect(jsonPath("$.dateOfBirth").value("1980-05-17"))
        .andExpect(header().exists(ServiceTimeFilter.HEADER));
  }

  @Test
  void readOfAMissingCustomerIs404() throws Exception {
    when(service.read(7L)).thenReturn(Optional.empty());
    mvc.perform(get("/customers/7"))
        .andExpect(status().isNotFound())
        .andExpect(jsonPath("$.error").value("no customer 7"));
  }

  @Test
  void changeNameRenamesInTheService() throws Exception {
    Customer renamed = anna();
    renamed.rename("Ben", "Koch");
    when(service.rename(42L, "Ben", "Koch")).thenReturn(Optional.of(renamed));
    mvc.perform(
            put("/customers/42/name")
                .contentType(MediaType.APPLICATION_JSON)
                .content("{\"firstName\":\"Ben\",\"lastName\":\"Koch\"}"))
        .andExpect(status().isOk())
        .andExpect(jsonPath("$.firstName").value("Ben"))
        .andExpect(jsonPath("$.lastName").value("Koch"));
    verify(service).rename(42L, "Ben", "Koch");
  }

  @Test
  void changeNameWithoutANameIs400() throws Exception {
    mvc.perform(
            put("/customers/42/name")
                .contentType(MediaType.APPLICATION_JSON)
                .content("{\"firstName\":\"Ben\"}"))
        .andExpect(status().isBadRequest());
    verify(service, never()).rename(anyLong(), anyString(), anyString());
  }

  @Test
  void aDatabaseFailureIs503WithItsReason() throws Exception {
    when(service.read(1L)).thenThrow(new DataAccessResourceFailureException("connection refused"));
    mvc.perform(get("/customers/1"))
        .andExpect(status().isServiceUnavailable())
        .andExpect(jsonPath("$.error").value("DataAccessResourceFailureException: connection refused"))
        .andExpect(header().exists(ServiceTimeFilter.HEADER));
  }
}
